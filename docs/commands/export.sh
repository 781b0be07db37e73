build/trainrun export docs/recipes/own-images.yaml --checkpoint runs/own-images --format torchscript   # runs/own-images/model.pt
build/trainrun export docs/recipes/own-images.yaml --checkpoint runs/own-images --format onnx          # runs/own-images/model.onnx
