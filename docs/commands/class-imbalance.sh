build/trainrun check docs/recipes/class-imbalance.yaml   # the same with both imbalance remedies
