"""Control: the same conv net with no setter calls."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import classify, model_and_images

net, images = model_and_images()
classify(net, images)
