"""bench/compare's Python side of the efficientnet_b0 row: timm's efficientnet_b0
(tests/py/timm_efficientnet.py) in Accelerate's cv_example.py loop without Accelerate
(bench/py/pets.py says what it does), ImageNet mean/std (efficientnet_b0.ra_in1k's
pretrained_cfg), `classifier` trainable as recipes/pets_efficientnet_b0.yaml.

usage: /usr/bin/python3 bench/py/pets_efficientnet_b0.py --data DIR/images [--nproc 2 --threads 1 --workers 4 --epochs 5 --size 224 --eval --precision bf16]
"""
from pets import PetsSide
from timm_efficientnet import efficientnet_b0

SIDE = PetsSide(efficientnet_b0, classifier="classifier")
INPUT_SHAPE, build, train_step = SIDE.INPUT_SHAPE, SIDE.build, SIDE.train_step

if __name__ == "__main__":
    SIDE.main(__doc__)
