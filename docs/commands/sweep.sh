build/trainrun sweep recipes/quickstart.yaml optimizer.lr=3e-4,1e-3,3e-3
