"""The episode's side of the kept KV cache (paravt.models.hf.turn_cache): the main agent asks for
its rows to be kept and its next prompt EXTENDS the previous prompt + sampled tokens, so the hf
backend
prefills only the new part; sub-agent rows (one turn each) are not kept."""

from __future__ import annotations

from test_episode import TURN1, TURN2, _run, codec, is_sub_request, video  # noqa: F401 - fixtures


def test_main_turns_extend_the_kept_prompt_and_subagents_are_not_kept(video, codec) -> None:  # noqa: F811
    _, gen = _run(video, codec, [TURN1, TURN2])
    main = [r for b in gen.batches for r in b if not is_sub_request(r)]
    subs = [r for b in gen.batches for r in b if is_sub_request(r)]
    assert len(main) == 2 and len(subs) == 2
    assert all(r.keep_kv for r in main) and not any(r.keep_kv for r in subs)
    sampled = codec.encode_text(TURN1) + (codec.im_end_id,)  # what the scripted turn 1 returned
    kept = main[0].prompt_ids + sampled[:-1]  # what the backend keeps: the last token was never fed
    assert main[1].prompt_ids[: len(kept)] == kept and len(main[1].prompt_ids) > len(kept)
    assert main[1].videos[: len(main[0].videos)] == main[0].videos  # the overview stays first
