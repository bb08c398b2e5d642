"""The optional LLM: any OpenAI-compatible chat endpoint (llm.url in config)."""
