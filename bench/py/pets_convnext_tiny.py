"""bench/compare's Python side of the convnext_tiny row: timm's convnext_tiny
(tests/py/timm_convnext.py) in Accelerate's cv_example.py loop without Accelerate
(bench/py/pets.py says what it does), ImageNet mean/std (convnext_tiny.in12k_ft_in1k's
pretrained_cfg), `head.fc` trainable as recipes/pets_convnext_tiny.yaml.

usage: /usr/bin/python3 bench/py/pets_convnext_tiny.py --data DIR/images [--nproc 2 --threads 1 --workers 4 --epochs 5 --size 224 --eval --precision bf16]
"""
from pets import PetsSide
from timm_convnext import convnext_tiny

SIDE = PetsSide(convnext_tiny, classifier="head.fc")
INPUT_SHAPE, build, train_step = SIDE.INPUT_SHAPE, SIDE.build, SIDE.train_step

if __name__ == "__main__":
    SIDE.main(__doc__)
