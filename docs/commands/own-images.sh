build/trainrun check docs/recipes/own-images.yaml                    # classes, split, transforms, groups; nothing trained
build/trainrun docs/recipes/own-images.yaml world.nproc_per_node=2   # train on 2 processes (DDP over gloo)
