"""Export: records of processed docs (``records``, the one record model), the writers of every
format (``writers``), vector stores (``vectorstores``), the LangChain / LlamaIndex adapters and the
HTML view. Import each name from its module (``from spacy_clinchunk.export.vectorstores import to_chroma``).
"""
