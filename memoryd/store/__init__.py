"""The stores: Markdown files (the truth) and the indexes derived from them."""
