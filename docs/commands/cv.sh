build/trainrun cv recipes/quickstart.yaml --folds 5 --stratified
