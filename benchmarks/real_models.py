"""Reductions as public model code makes them: (op, shape, dim) read from the code named beside
each, at the sizes its configs and papers give, over a non-inner dim (the calls the workaround
routes; an inner one never reaches it).  bench_reductions.py --real-models times each in
fp32, bf16 and fp16.

    python benchmarks/bench_reductions.py --real-models --rounds 3 --moved-every 1
"""

from __future__ import annotations

DTYPES = ("float32", "bfloat16", "float16")

# (op, shape, dim, where it comes from)
MODELS: tuple[tuple[str, tuple[int, ...], int, str], ...] = (
    # semantic segmentation: class probabilities over the channel axis of the logits
    (
        "softmax",
        (8, 150, 128, 128),
        1,
        "huggingface/transformers models/segformer/modeling_segformer.py: logits (B, num_labels, H/4, W/4), ADE20K 150 labels, 512 crop",
    ),
    ("softmax", (4, 150, 65536), 1, "the same logits flattened over H x W (issue 32's 8.1x case)"),
    (
        "softmax",
        (2, 19, 256, 256),
        1,
        "huggingface/transformers modeling_segformer.py on Cityscapes: 19 labels, 1024 crop, logits at H/4",
    ),
    (
        "softmax",
        (4, 21, 520, 520),
        1,
        "pytorch/vision models/segmentation/deeplabv3.py: output upsampled to the input, VOC 21 classes, references/segmentation crop 520",
    ),
    # object-centric: slots compete for each input position
    (
        "softmax",
        (2, 5, 1024),
        1,
        "lucidrains/slot-attention slot_attention.py: attn = dots.softmax(dim=1), dots (b, num_slots, n); its README's (2, 1024, 512) input, 5 slots",
    ),
    (
        "softmax",
        (64, 7, 16384),
        1,
        "lucidrains/slot-attention's layout at google-research/google-research slot_attention's CLEVR sizes: 7 slots, a 128 x 128 map, batch 64",
    ),
    # a contrastive loss's other direction: the logits' transpose
    (
        "softmax",
        (4096, 4096),
        0,
        "openai/CLIP clip/model.py: logits_per_text = logits_per_image.t(), a softmax over the image axis; batch 4096",
    ),
    # token pooling: vision and language transformers
    (
        "mean",
        (64, 196, 768),
        1,
        "huggingface/pytorch-image-models timm/models/vision_transformer.py global_pool='avg': x[:, num_prefix_tokens:].mean(dim=1), ViT-B/16 at 224",
    ),
    (
        "mean",
        (32, 256, 1024),
        1,
        "facebookresearch/dinov2 linear eval: x_norm_patchtokens.mean(dim=1), ViT-L/14 at 224 (256 patches)",
    ),
    (
        "mean",
        (8, 1568, 768),
        1,
        "MCG-NJU/VideoMAE modeling_finetune.py: fc_norm(x.mean(1)), 16 frames x 14 x 14 tubelets of 2 (1568 tokens), ViT-B",
    ),
    (
        "sum",
        (64, 128, 384),
        1,
        "UKPLab/sentence-transformers models/Pooling.py: torch.sum(token_embeddings * input_mask_expanded, 1), all-MiniLM-L6-v2",
    ),
    (
        "sum",
        (32, 512, 1024),
        1,
        "intfloat/e5 average_pool: last_hidden.masked_fill(...).sum(dim=1) / mask.sum(dim=1), e5-large at 512 tokens",
    ),
    # audio: pooling over time
    (
        "mean",
        (16, 499, 768),
        1,
        "huggingface/transformers models/wav2vec2/modeling_wav2vec2.py ForSequenceClassification: hidden_states.mean(dim=1), 10 s of 16 kHz",
    ),
    (
        "mean",
        (16, 1500, 1280),
        1,
        "huggingface/transformers models/whisper/modeling_whisper.py WhisperForAudioClassification: hidden_states.mean(dim=1), large-v2 (1500 frames)",
    ),
    (
        "mean",
        (3000, 80),
        0,
        "speechbrain/speechbrain processing/features.py InputNormalization: mean over time of a (T, 80) fbank, 30 s at 100 frames/s",
    ),
    # CNN attention: pooling over channels
    (
        "mean",
        (32, 256, 56, 56),
        1,
        "Jongchan/attention-module MODELS/cbam.py ChannelPool: torch.mean(x, 1), ResNet-50 stage 1 at 224",
    ),
    ("mean", (32, 2048, 7, 7), 1, "the same ChannelPool on ResNet-50's last stage"),
    # training: a linear layer's bias gradient sums the tokens (autograd's grad.sum(0))
    (
        "sum",
        (8192, 3072),
        0,
        "openai gpt-2 / huggingface modeling_gpt2.py Conv1D c_fc bias: 8 x 1024 tokens, 3072 wide",
    ),
    (
        "sum",
        (4096, 4096),
        0,
        "huggingface modeling_bert.py: BertIntermediate / attention output bias, 32 x 128 tokens (BERT-large 4096 wide)",
    ),
    # mixture of experts: the load-balancing loss's means over tokens
    (
        "mean",
        (32768, 8),
        0,
        "huggingface/transformers models/mixtral/modeling_mixtral.py load_balancing_loss_func: torch.mean(routing_weights, dim=0), 8 experts",
    ),
)


def cases() -> list[str]:
    """Every model case in every dtype, as bench_reductions.py's op:MxNxK:dim:dtype."""
    return [f"{op}:{'x'.join(map(str, shape))}:{dim}:{dtype}" for op, shape, dim, _ in MODELS for dtype in DTYPES]
