import asyncio

from robusteval.configure import build_config
from robusteval.engine import Engine, Store
from robusteval.run import ModelStarter
from robusteval.testing.openai_stub import StubConfig, StubServer


def test_model_starter_shares_equal_specs_and_separates_different_ones(tmp_path):
    config = build_config({}, {"suite": "mcq", "cache_dir": str(tmp_path)})

    async def go(url):
        engine = Engine(Store(tmp_path / "s.sqlite"))
        start = ModelStarter(engine, config)
        try:
            a = await start(f"openai:m?base_url={url}")
            same = await start(f"openai:m?base_url={url}")
            other = await start(f"openai:m?base_url={url}&max_concurrency=2")  # same short name, other options
            return a, same, other, dict(start.started)
        finally:
            await engine.close()
            engine.store.close()

    with StubServer(StubConfig()) as stub:
        a, same, other, started = asyncio.run(go(stub.base_url))
    assert a == same == "openai:m" and other == "openai:m#2"
    assert len(started) == 2


def test_helper_models_inherit_the_options_of_the_model_under_test(tmp_path):
    """`--model 'llamacpp?n_threads=1'` with the default rewriter/judge `llamacpp`: one model, started
    once with one thread, not a second copy with every core as threads."""
    config = build_config({}, {"suite": "mcq", "cache_dir": str(tmp_path), "models": ["llamacpp?n_threads=1"]})

    async def go():
        engine = Engine(Store(tmp_path / "s.sqlite"))
        start = ModelStarter(engine, config)
        try:
            tested = await start("llamacpp?n_threads=1")
            helper = await start("llamacpp")
            own = await start("llamacpp?n_threads=2")
            return tested, helper, own, dict(start.started)
        finally:
            await engine.close()
            engine.store.close()

    tested, helper, own, started = asyncio.run(go())
    assert helper == tested  # the same instance and cache
    assert own != tested  # a helper's own option wins: its own instance
    assert started == {tested: "llamacpp?n_threads=1", own: "llamacpp?n_threads=2"}
