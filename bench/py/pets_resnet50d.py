"""bench/compare's Python side of the pets row: timm's resnet50d (tests/py/timm_resnet.py) in
Accelerate's cv_example.py loop without Accelerate (bench/py/pets.py says what it does), ImageNet
mean/std (resnet50d's default_cfg), `fc` trainable.

usage: /usr/bin/python3 bench/py/pets_resnet50d.py --data DIR/images [--nproc 2 --threads 1 --workers 4 --epochs 5 --size 224 --eval --precision bf16]
"""
from pets import PetsSide
from timm_resnet import resnet50d

SIDE = PetsSide(resnet50d, classifier="fc")
INPUT_SHAPE, build, train_step = SIDE.INPUT_SHAPE, SIDE.build, SIDE.train_step

if __name__ == "__main__":
    SIDE.main(__doc__)
