import torch


def nearest_neighbours(distances, batches=6, queries=512, database=8192, dim=128, k=5):
    """k-nearest-neighbour retrieval: six batches of 512 query embeddings against a database of 8192 (unit-norm,
    random); `distances(q, db)` returns the Euclidean distance matrix."""
    g = torch.Generator().manual_seed(0)
    db = torch.nn.functional.normalize(torch.randn(database, dim, generator=g), dim=-1)
    total = 0.0
    with torch.no_grad():
        for _ in range(batches):
            q = torch.nn.functional.normalize(torch.randn(queries, dim, generator=g), dim=-1)
            nearest = distances(q, db).topk(k, dim=-1, largest=False)
            total += float(nearest.values.sum())
    print(round(total, 3))
