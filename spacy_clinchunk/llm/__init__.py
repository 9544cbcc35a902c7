"""LLM plumbing of clin_llm_context: clients (HTTP, heuristic), tokens, windows, prompt, scheduler, output, cache."""
