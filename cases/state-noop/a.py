"""Control: the conv net of mkldnn-off with setters that restate the values already in effect
(the thread count PyTorch chose, oneDNN on): nothing changes."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from common import classify, model_and_images

torch.set_num_threads(torch.get_num_threads())
net, images = model_and_images()
with torch.backends.mkldnn.flags(enabled=True):
    classify(net, images)
