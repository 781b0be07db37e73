"""bench/compare's Python side of the pets row: timm's resnet50d in Accelerate's cv_example.py loop
without Accelerate (bench/py/pets.py says what it does), ImageNet mean/std (resnet50d's
default_cfg), `fc` trainable. timm itself where it is importable (pip machines; the summary line
says "model": "timm X.Y"), else its plain-torch rebuild, tests/py/timm_resnet.py (Debian has no timm).

usage: /usr/bin/python3 bench/py/pets_resnet50d.py --data DIR/images [--nproc 2 --threads 1 --workers 4 --epochs 5 --size 224 --eval --precision bf16]
"""
from pets import PetsSide

try:
    import timm

    def resnet50d(num_classes):
        return timm.create_model("resnet50d", num_classes=num_classes)
    SOURCE = f"timm {timm.__version__}"
except ImportError:
    from timm_resnet import resnet50d
    SOURCE = "tests/py/timm_resnet.py"

SIDE = PetsSide(resnet50d, classifier="fc", source=SOURCE)
INPUT_SHAPE, build, train_step = SIDE.INPUT_SHAPE, SIDE.build, SIDE.train_step

if __name__ == "__main__":
    SIDE.main(__doc__)
