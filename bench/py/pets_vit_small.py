"""bench/compare's Python side of the vit_small row: timm's vit_small_patch16_224
(tests/py/timm_vit.py) in Accelerate's cv_example.py loop without Accelerate (bench/py/pets.py
says what it does), mean/std 0.5 (vit_small_patch16_224.augreg_in21k_ft_in1k's pretrained_cfg),
`head` trainable as recipes/pets_vit_small.yaml.

usage: /usr/bin/python3 bench/py/pets_vit_small.py --data DIR/images [--nproc 2 --threads 1 --workers 4 --epochs 5 --eval --precision bf16]
"""
from pets import PetsSide
from timm_vit import vit_small_patch16_224

SIDE = PetsSide(vit_small_patch16_224, classifier="head", mean=(0.5, 0.5, 0.5), std=(0.5, 0.5, 0.5))
INPUT_SHAPE, build, train_step = SIDE.INPUT_SHAPE, SIDE.build, SIDE.train_step

if __name__ == "__main__":
    SIDE.main(__doc__)
