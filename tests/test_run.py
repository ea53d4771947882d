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
