"""ParaVT-Synth: scenes, questions, oracle traces, the simulated prior's data, the builder."""
