#!/usr/bin/env python3
"""Image classification with a torchvision ResNet-18 exported to ONNX, the way torchvision users
write it for ONNX Runtime: PIL image, torchvision transforms, run, softmax, top-5.

    classify_image.py MODEL.onnx OUT.npy
The image is generated (a fixed seed), as the model's weights are random (scripts/get-models).
tests/python/test_ort_scripts.py runs it as is and with its import changed to fusor."""
import sys

import numpy as np
import onnxruntime
import torch
from PIL import Image
from torchvision import transforms


def main(model, out):
    image = Image.fromarray(np.random.default_rng(0).integers(0, 256, (300, 400, 3), dtype=np.uint8))
    preprocess = transforms.Compose([
        transforms.Resize(256),
        transforms.CenterCrop(224),
        transforms.ToTensor(),
        transforms.Normalize(mean=[0.485, 0.456, 0.406], std=[0.229, 0.224, 0.225]),
    ])
    batch = preprocess(image).unsqueeze(0)

    session = onnxruntime.InferenceSession(model, providers=["CPUExecutionProvider"])
    input_name = session.get_inputs()[0].name
    logits = session.run(None, {input_name: batch.numpy()})[0]
    probabilities = torch.nn.functional.softmax(torch.from_numpy(logits), dim=1)
    top5 = torch.topk(probabilities, 5)
    for p, i in zip(top5.values[0], top5.indices[0]):
        print(f"class {int(i):4d}: {float(p):.4f}")
    np.save(out, probabilities.numpy())


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
