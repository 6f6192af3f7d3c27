"""Efficient: text and image states are concatenated once, before the first single
block, and split once, after the last. The single blocks' own submodules compute
the same math on the joint sequence (see README.md)."""
import os, sys
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import torch
from diffusers.models.transformers.transformer_flux import FluxSingleTransformerBlock
from common import denoise, model


def joint_of(text, image):
    """The joint tensor when `text` and `image` are the two halves that the
    previous block split off it, else None."""
    base = text._base
    if base is None or image._base is not base or base.dim() != 3:
        return None
    if base.shape[1] != text.shape[1] + image.shape[1] or text.storage_offset() != base.storage_offset():
        return None
    if image.storage_offset() != base.storage_offset() + text.shape[1] * base.stride(1):
        return None
    return base


class JointSingleBlock(FluxSingleTransformerBlock):
    """The single block on the joint sequence: concatenates only when its inputs
    are not already the two halves of one tensor, and returns views (no copy)."""

    def forward(self, hidden_states, encoder_hidden_states, temb, image_rotary_emb=None, joint_attention_kwargs=None):
        text_tokens = encoder_hidden_states.shape[1]
        joint = joint_of(encoder_hidden_states, hidden_states)
        if joint is None:  # the first single block: the only concatenation
            joint = torch.cat([encoder_hidden_states, hidden_states], dim=1)
        normed, gate = self.norm(joint, emb=temb)
        mlp = self.act_mlp(self.proj_mlp(normed))
        attn = self.attn(hidden_states=normed, image_rotary_emb=image_rotary_emb, **(joint_attention_kwargs or {}))
        joint = joint + gate.unsqueeze(1) * self.proj_out(torch.cat([attn, mlp], dim=2))
        return joint[:, :text_tokens], joint[:, text_tokens:]


net = model()
for block in net.single_transformer_blocks:
    block.__class__ = JointSingleBlock  # same weights, the joint-sequence forward
denoise(net)
