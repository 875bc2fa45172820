"""The papers' benchmarks scored as lmms-eval scores them (`lmms_rules`, `scoring`), and run through
the eval runner with the paper's protocol (`protocol`)."""
