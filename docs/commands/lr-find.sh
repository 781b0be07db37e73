build/trainrun lr-find recipes/quickstart.yaml
