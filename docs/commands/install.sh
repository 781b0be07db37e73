make demo   # installs what is missing (apt), builds, trains BasicNet on Fashion-MNIST (recipes/quickstart.yaml)
make test   # the same set-up, then the whole test suite (ctest)
