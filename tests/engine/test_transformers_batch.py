"""examples/transformers_batch.py: a batch file answered by a local transformers model gives the
answers the `hf:` backend gives live, and the run completes from the store."""

import gzip
import importlib.util
import json
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "transformers_batch.py"


def _example():
    spec = importlib.util.spec_from_file_location("transformers_batch", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    assert spec.loader is not None
    spec.loader.exec_module(module)
    return module


def _responses(run) -> dict[str, str]:
    return {f"{s['item_id']} {s['variant']}": s["response"] for s in run.samples()}


def test_batched_answers_equal_the_hf_backends_and_complete_the_run(cli_run, tmp_path, mcq_file, tiny_hf_model):
    flags = ["--data", str(mcq_file), "--families", "order", "--limit", "3", "--max-tokens", "6", "--quiet"]
    direct = cli_run("run", "mcq", *flags, "--model", f"hf:{tiny_hf_model}", "--run-id", "direct",
                     "--cache-dir", str(tmp_path / "direct-cache"))
    assert direct.code == 0
    requests = tmp_path / "requests.jsonl.gz"
    plain = tmp_path / "requests.jsonl"
    assert cli_run("run", "mcq", *flags, "--model", "batchfile:tiny", "--export-requests", str(plain)).code == 0
    lines = plain.read_text(encoding="utf-8").splitlines()
    with gzip.open(requests, "wt", encoding="utf-8") as f:  # gzip-compressed input is read as it is
        f.write("\n".join(lines) + "\n")
    one, four = tmp_path / "answers-1.jsonl.gz", tmp_path / "answers-4.jsonl"  # .gz: written compressed
    example = _example()
    assert example.run(str(requests), str(one), str(tiny_hf_model), batch_size=1, device="cpu") == {
        "answered": len(lines), "refused": 0, "unanswered": 0}
    example.run(str(requests), str(four), str(tiny_hf_model), batch_size=4, device="cpu")
    texts = {}
    for path in (one, four):
        raw = path.read_bytes()
        text = (gzip.decompress(raw) if path.suffix == ".gz" else raw).decode("utf-8")
        out = [json.loads(line) for line in text.splitlines()]
        assert sorted(o["custom_id"] for o in out) == sorted(json.loads(line)["custom_id"] for line in lines)
        texts[path] = {o["custom_id"]: o["response"]["body"]["choices"][0]["message"]["content"] for o in out}
    assert texts[one] == texts[four]  # left padding in a batch changes no answer

    imported = cli_run("import-results", str(one), "--cache-dir", str(tmp_path / "cache"))  # read compressed
    assert imported.code == 0 and f"stored {len(lines)} answers" in imported.out
    final = cli_run("run", "mcq", *flags, "--model", "batchfile:tiny", "--run-id", "final")
    assert final.code == 0
    assert final.results()["models"]["batchfile:tiny"]["usage"]["new"] == 0
    assert _responses(final) == _responses(direct)  # the same greedy answers as the live hf: backend


def test_loglik_and_sampled_lines_get_error_lines_and_a_time_limit_leaves_the_rest(tmp_path, tiny_hf_model):
    chat = {"custom_id": "a" * 64, "method": "POST", "url": "/v1/chat/completions",
            "body": {"model": "m", "messages": [{"role": "user", "content": "the cat"}], "temperature": 0.0,
                     "max_tokens": 3}}
    lines = [chat, dict(chat, custom_id="b" * 64, url="/v1/completions"),
             dict(chat, custom_id="c" * 64, body=dict(chat["body"], temperature=0.7))]
    requests, answers = tmp_path / "r.jsonl", tmp_path / "a.jsonl"
    requests.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    counts = _example().run(str(requests), str(answers), str(tiny_hf_model), device="cpu", time_limit_s=-1.0)
    assert counts == {"answered": 0, "refused": 2, "unanswered": 1}
    out = {o["custom_id"]: o for o in map(json.loads, answers.read_text(encoding="utf-8").splitlines())}
    assert set(out) == {"b" * 64, "c" * 64}
    assert "only chat completions" in out["b" * 64]["error"]["message"]
    assert "temperature 0" in out["c" * 64]["error"]["message"]
