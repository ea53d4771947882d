"""Servers that tests and benchmarks run on loopback instead of a real API.

- `robusteval.testing.openai_stub`: a deterministic OpenAI-compatible server with fixed latency,
  injectable faults (429 with Retry-After, 500, replies past the client's timeout, malformed JSON), a
  server-side RPM limit, echoed prompt log-probabilities and hit counters; in-process or a subprocess.
- `robusteval.testing.llama_server`: a real llama.cpp HTTP server for the embedded model.
"""
