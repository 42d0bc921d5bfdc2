"""An embedder for re-embedding tests: the packaged model under another name, counting the texts it embeds."""

from collab.embeddings import catalog
from collab.embeddings.model import Embedder, load


class Counting(Embedder):
    """The packaged model under another name, counting every text it embeds."""

    def __init__(self, name: str):
        base = load(catalog.FAST)
        self.name, self.model, self.dimensions = name, base.model, base.dimensions
        self.seen: list[str] = []

    def encode(self, texts, *, batch_size=64):
        self.seen.extend(texts)
        return super().encode(texts, batch_size=batch_size)
