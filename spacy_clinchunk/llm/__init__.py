"""LLM plumbing of clin_llm_context: clients, tokens, windows, prompt, scheduler, output cleaning, cache."""
