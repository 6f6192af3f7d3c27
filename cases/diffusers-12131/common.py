"""A few denoising steps of a small random-init Flux transformer
(diffusers.FluxTransformer2DModel). Each FluxSingleTransformerBlock takes the
text and image states separately, concatenates them (torch.cat along the
sequence), runs attention + MLP on the joint sequence and splits the result
again, so every single block copies the whole joint sequence once more."""
import torch
from diffusers import FluxTransformer2DModel

BATCH, TEXT_TOKENS, LATENT_HW, STEPS = 1, 128, 32, 4
# On a GPU where there is one (where the copy is worth 6.1%); on a CPU it still
# runs, but the copy is below the noise floor there (README.md).
DEVICE = "cuda" if torch.cuda.is_available() else "cpu"


def model():
    torch.manual_seed(0)
    return FluxTransformer2DModel(patch_size=1, in_channels=16, num_layers=1, num_single_layers=8,
                                  attention_head_dim=32, num_attention_heads=4, joint_attention_dim=64,
                                  pooled_projection_dim=64, guidance_embeds=False,
                                  axes_dims_rope=(8, 12, 12)).to(DEVICE).eval()


def inputs():
    g = torch.Generator().manual_seed(1)
    image_tokens = LATENT_HW * LATENT_HW
    latents = torch.randn(BATCH, image_tokens, 16, generator=g)
    text = torch.randn(BATCH, TEXT_TOKENS, 64, generator=g)
    pooled = torch.randn(BATCH, 64, generator=g)
    rows, cols = torch.meshgrid(torch.arange(LATENT_HW), torch.arange(LATENT_HW), indexing="ij")
    img_ids = torch.stack([torch.zeros_like(rows), rows, cols], dim=-1).reshape(-1, 3).float()
    txt_ids = torch.zeros(TEXT_TOKENS, 3)
    return tuple(t.to(DEVICE) for t in (latents, text, pooled, img_ids, txt_ids))


def denoise(net):
    latents, text, pooled, img_ids, txt_ids = inputs()
    with torch.no_grad():
        for step in range(STEPS):  # Euler steps of a flow-matching sampler
            t = torch.full((BATCH,), 1.0 - step / STEPS, device=DEVICE)
            velocity = net(hidden_states=latents, encoder_hidden_states=text, pooled_projections=pooled,
                           timestep=t, img_ids=img_ids, txt_ids=txt_ids, return_dict=False)[0]
            latents = latents - velocity / STEPS
    print(f"{latents.norm().item():.6g}")
