"""LLM plumbing: HTTP clients, token counting and the response cache of clin_llm_context."""
