"""Building the golden set, between loading (load/: corpora and embeddings) and running (runs/): questions and
labels from files, tables attached in place, search logs and click models, questions a chat model writes, its
judgments of unjudged results, production failures promoted, labels' provenance and history, and export."""
