"""The topic graph: long-term episodes clustered into topic nodes, joined by
co-occurrence edges learned from retrieval."""
