build/trainrun predict --model runs/own-images/model.pt photo.jpg                           # one JSON line per image
build/trainrun predict docs/recipes/own-images.yaml --checkpoint runs/own-images photo.jpg  # the same from the recipe and the weights
