build/trainrun recipes/quickstart.yaml                                         # train: runs/quickstart/model.safetensors
build/trainrun check recipes/quickstart.yaml optimizer.lr=3e-4 train.epochs=2  # what a run with these overrides would do
build/trainrun eval recipes/quickstart.yaml --checkpoint runs/quickstart/model.safetensors
build/trainrun list                                                            # every registered component
build/trainrun describe optimizers/adamw                                       # one component's parameters
