"""The zoo's architectures: what each is, where it comes from, how it is built and fed.

Every builder returns (module, inputs, output_names): an eval-mode PyTorch module that takes the
inputs positionally and returns a tensor or a tuple of tensors, a dict name -> example tensor
(random with the catalog's seed), and one name per output. Nothing is downloaded: torchvision
models are built with weights=None and transformers models from their configuration classes.
Sizes are small on purpose (inputs of 32-96 pixels, a few layers for the text models): the zoo
exercises structure, not scale.
"""

import dataclasses
from typing import Callable

import torch
import torch.nn as nn

import handwritten as hw


@dataclasses.dataclass
class Spec:
    name: str
    family: str  # classification, detection, segmentation, video, text, vision, speech, other
    source: str  # where the architecture comes from, for the table
    build: Callable
    fp16: bool = True  # an fp16 export applies
    int8: bool = True  # an int8 QDQ export applies (the model has GEMMs or convolutions)
    ctest: bool = False  # small enough to commit and fast enough for CTest (label zoo)
    ts_opset: int = 17  # the TorchScript-based export's opset (higher where an op needs it)
    note: str = ""


class Outputs(nn.Module):
    """Runs `module` and keeps the named or indexed parts of its output, as a tuple. With
    `keywords`, the positional inputs are passed by those names (transformers models take most
    of their inputs by keyword)."""

    def __init__(self, module, pick, keywords=None):
        super().__init__()
        self.module = module
        self.pick = pick
        self.keywords = keywords

    def forward(self, *args):
        if self.keywords:
            return self.pick(self.module(**dict(zip(self.keywords, args))))
        return self.pick(self.module(*args))


def _image(gen, c=3, h=64, w=None):
    return torch.randn(1, c, h, w or h, generator=gen)


def _ids(gen, vocab, seq):
    return torch.randint(0, vocab, (1, seq), generator=gen)


# ----------------------------------------------------------------------------------------------
# torchvision
# ----------------------------------------------------------------------------------------------


def _tv(fn_name, image=64, **kw):
    def build(gen):
        import torchvision.models as tvm

        model = getattr(tvm, fn_name)(weights=None, **kw)
        return model, {"image": _image(gen, h=image)}, ["logits"]

    return build


def _tv_mobilenet_v3_small_narrow(gen):
    from torchvision.models import mobilenetv3

    setting, last = mobilenetv3._mobilenet_v3_conf("mobilenet_v3_small", width_mult=0.25)
    model = mobilenetv3.MobileNetV3(setting, last, num_classes=10)
    return model, {"image": _image(gen, h=64)}, ["logits"]


def _tv_shufflenet_narrow(gen):
    from torchvision.models import shufflenetv2

    model = shufflenetv2.ShuffleNetV2([2, 2, 2], [12, 24, 48, 96, 256], num_classes=10)
    return model, {"image": _image(gen, h=64)}, ["logits"]


def _tv_fpn(gen):
    from torchvision.models.detection.backbone_utils import resnet_fpn_backbone

    backbone = resnet_fpn_backbone(backbone_name="resnet18", weights=None, trainable_layers=5)
    names = ["p2", "p3", "p4", "p5", "pool"]
    model = Outputs(backbone, lambda d: tuple(d.values()))
    return model, {"image": _image(gen, h=96)}, names


def _tv_ssdlite(gen):
    from torchvision.models.detection import ssdlite320_mobilenet_v3_large

    det = ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None, num_classes=11)

    class Head(nn.Module):
        # The network before box decoding and NMS (their output size depends on the data).
        def __init__(self, det):
            super().__init__()
            self.backbone = det.backbone
            self.head = det.head

        def forward(self, x):
            out = self.head(list(self.backbone(x).values()))
            return out["bbox_regression"], out["cls_logits"]

    return Head(det), {"image": _image(gen, h=128)}, ["bbox_regression", "cls_logits"]


def _tv_rpn(gen):
    from torchvision.models.detection import fasterrcnn_mobilenet_v3_large_320_fpn

    det = fasterrcnn_mobilenet_v3_large_320_fpn(weights=None, weights_backbone=None, num_classes=11)

    class Rpn(nn.Module):
        # Backbone, FPN and the region proposal head: objectness and box deltas per level
        # (proposal selection and RoI heads need NMS, whose output size depends on the data).
        def __init__(self, det):
            super().__init__()
            self.backbone = det.backbone
            self.head = det.rpn.head

        def forward(self, x):
            feats = list(self.backbone(x).values())
            obj, deltas = self.head(feats)
            return tuple(obj) + tuple(deltas)

    levels = 3
    names = ["objectness_%d" % i for i in range(levels)] + ["deltas_%d" % i for i in range(levels)]
    return Rpn(det), {"image": _image(gen, h=96)}, names


def _tv_seg(fn_name):
    def build(gen):
        import torchvision.models.segmentation as seg

        model = getattr(seg, fn_name)(weights=None, weights_backbone=None, num_classes=5)
        return Outputs(model, lambda d: d["out"]), {"image": _image(gen, h=64)}, ["mask"]

    return build


def _tv_video(fn_name, frames=4, size=32):
    def build(gen):
        import torchvision.models.video as video

        model = getattr(video, fn_name)(weights=None, num_classes=10)
        return model, {"clip": torch.randn(1, 3, frames, size, size, generator=gen)}, ["logits"]

    return build


# ----------------------------------------------------------------------------------------------
# transformers (from configurations; no download)
# ----------------------------------------------------------------------------------------------


def _hf(model_cls, config):
    import transformers

    config._attn_implementation = "eager"
    return getattr(transformers, model_cls)(config)


# The text, vision and speech transformers: hidden size and feed-forward width (small, so the
# CTest subset can be committed; the structure is the point).
H = 32
FFN = 64


def _bert(gen):
    import transformers

    cfg = transformers.BertConfig(vocab_size=256, hidden_size=H, num_hidden_layers=2, num_attention_heads=4,
                                  intermediate_size=FFN, max_position_embeddings=32)
    model = _hf("BertModel", cfg)
    pick = lambda o: (o.last_hidden_state, o.pooler_output)
    seq = 16
    mask = torch.ones(1, seq, dtype=torch.int64)
    mask[0, 12:] = 0
    inputs = {"input_ids": _ids(gen, 256, seq), "attention_mask": mask}
    return Outputs(model, pick), inputs, ["last_hidden_state", "pooler_output"]


def _distilbert(gen):
    import transformers

    cfg = transformers.DistilBertConfig(vocab_size=256, dim=H, n_layers=2, n_heads=4, hidden_dim=FFN,
                                        max_position_embeddings=32)
    model = _hf("DistilBertModel", cfg)
    return Outputs(model, lambda o: o.last_hidden_state), {"input_ids": _ids(gen, 256, 16)}, ["last_hidden_state"]


def _gpt2(gen):
    import transformers

    cfg = transformers.GPT2Config(vocab_size=256, n_positions=32, n_embd=H, n_layer=2, n_head=4, use_cache=False,
                                 bos_token_id=0, eos_token_id=0)
    model = _hf("GPT2LMHeadModel", cfg)
    inputs = {"input_ids": _ids(gen, 256, 16), "attention_mask": torch.ones(1, 16, dtype=torch.int64)}
    return Outputs(model, lambda o: o.logits, list(inputs)), inputs, ["logits"]


def _llama(gen):
    import transformers

    cfg = transformers.LlamaConfig(vocab_size=256, hidden_size=H, intermediate_size=FFN, num_hidden_layers=2,
                                   num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=32,
                                   use_cache=False)
    model = _hf("LlamaForCausalLM", cfg)
    inputs = {"input_ids": _ids(gen, 256, 16), "attention_mask": torch.ones(1, 16, dtype=torch.int64)}
    return Outputs(model, lambda o: o.logits, list(inputs)), inputs, ["logits"]


def _bart(gen):
    import transformers

    cfg = transformers.BartConfig(vocab_size=256, d_model=H, encoder_layers=2, decoder_layers=2,
                                  encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=FFN,
                                  decoder_ffn_dim=FFN, max_position_embeddings=32, use_cache=False)
    model = _hf("BartModel", cfg)
    pick = lambda o: (o.last_hidden_state, o.encoder_last_hidden_state)
    inputs = {"input_ids": _ids(gen, 256, 16), "decoder_input_ids": _ids(gen, 256, 8)}
    return Outputs(model, pick, list(inputs)), inputs, ["last_hidden_state", "encoder_last_hidden_state"]


def _t5(gen):
    import transformers

    cfg = transformers.T5Config(vocab_size=256, d_model=H, d_kv=H // 4, d_ff=FFN, num_layers=2, num_decoder_layers=2,
                                num_heads=4, relative_attention_num_buckets=16, use_cache=False,
                                feed_forward_proj="gated-gelu")
    model = _hf("T5Model", cfg)
    pick = lambda o: (o.last_hidden_state, o.encoder_last_hidden_state)
    inputs = {"input_ids": _ids(gen, 256, 16), "decoder_input_ids": _ids(gen, 256, 8)}
    return Outputs(model, pick, list(inputs)), inputs, ["last_hidden_state", "encoder_last_hidden_state"]


def _vit(gen):
    import transformers

    cfg = transformers.ViTConfig(image_size=32, patch_size=8, num_channels=3, hidden_size=H, num_hidden_layers=2,
                                 num_attention_heads=4, intermediate_size=FFN)
    model = _hf("ViTModel", cfg)
    pick = lambda o: (o.last_hidden_state, o.pooler_output)
    return Outputs(model, pick), {"pixel_values": _image(gen, h=32)}, ["last_hidden_state", "pooler_output"]


def _wav2vec2(gen):
    import transformers

    cfg = transformers.Wav2Vec2Config(hidden_size=H, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=FFN, conv_dim=(32, 32, 32), conv_stride=(5, 2, 2),
                                      conv_kernel=(10, 3, 3), num_conv_pos_embeddings=16,
                                      num_conv_pos_embedding_groups=4, do_stable_layer_norm=False)
    model = _hf("Wav2Vec2Model", cfg)
    audio = torch.randn(1, 1600, generator=gen)
    return Outputs(model, lambda o: o.last_hidden_state), {"audio": audio}, ["last_hidden_state"]


def _whisper_encoder(gen):
    import transformers

    cfg = transformers.WhisperConfig(num_mel_bins=16, d_model=H, encoder_layers=2, encoder_attention_heads=4,
                                     encoder_ffn_dim=FFN, max_source_positions=32, decoder_layers=1,
                                     decoder_attention_heads=4, decoder_ffn_dim=FFN, vocab_size=256,
                                     pad_token_id=0, bos_token_id=0, eos_token_id=0, decoder_start_token_id=0)
    model = _hf("WhisperModel", cfg).get_encoder()
    mel = torch.randn(1, 16, 64, generator=gen)
    return Outputs(model, lambda o: o.last_hidden_state), {"mel": mel}, ["last_hidden_state"]


def _convnext_hf(gen):
    import transformers

    cfg = transformers.ConvNextConfig(num_channels=3, hidden_sizes=[16, 32, 64, 128], depths=[1, 1, 2, 1],
                                      num_labels=10)
    model = _hf("ConvNextForImageClassification", cfg)
    return Outputs(model, lambda o: o.logits), {"pixel_values": _image(gen, h=64)}, ["logits"]


def _segformer(gen):
    import transformers

    cfg = transformers.SegformerConfig(num_channels=3, num_encoder_blocks=4, depths=[1, 1, 1, 1],
                                       sr_ratios=[8, 4, 2, 1], hidden_sizes=[16, 32, 64, 128],
                                       num_attention_heads=[1, 2, 4, 8], decoder_hidden_size=64,
                                       num_labels=5)
    model = _hf("SegformerForSemanticSegmentation", cfg)
    return Outputs(model, lambda o: o.logits), {"pixel_values": _image(gen, h=64)}, ["logits"]


# ----------------------------------------------------------------------------------------------
# hand-written
# ----------------------------------------------------------------------------------------------


def _plain(cls, inputs, outputs, **kw):
    def build(gen):
        return cls(**kw), {k: f(gen) for k, f in inputs.items()}, outputs

    return build


SPECS = [
    # torchvision classification
    Spec("resnet18", "classification", "torchvision resnet18", _tv("resnet18", num_classes=10)),
    Spec("mobilenet_v2", "classification", "torchvision mobilenet_v2", _tv("mobilenet_v2", num_classes=10)),
    Spec("mobilenet_v3_small", "classification", "torchvision MobileNetV3 (small settings, width 0.25)",
         _tv_mobilenet_v3_small_narrow, ctest=True),
    Spec("convnext_tiny", "classification", "torchvision convnext_tiny", _tv("convnext_tiny", num_classes=10)),
    Spec("regnet_y_400mf", "classification", "torchvision regnet_y_400mf", _tv("regnet_y_400mf", num_classes=10)),
    Spec("shufflenet_v2", "classification", "torchvision ShuffleNetV2 (stages 2/2/2, narrow)",
         _tv_shufflenet_narrow, ctest=True),
    Spec("squeezenet1_1", "classification", "torchvision squeezenet1_1", _tv("squeezenet1_1", num_classes=10)),
    Spec("densenet121", "classification", "torchvision densenet121", _tv("densenet121", num_classes=10)),
    Spec("mnasnet0_5", "classification", "torchvision mnasnet0_5", _tv("mnasnet0_5", num_classes=10)),
    Spec("googlenet", "classification", "torchvision googlenet",
         _tv("googlenet", num_classes=10, aux_logits=False, init_weights=True)),
    # detection backbones and heads (before box decoding and NMS)
    Spec("resnet18_fpn", "detection", "torchvision resnet_fpn_backbone(resnet18)", _tv_fpn),
    Spec("ssdlite_mobilenet_v3", "detection", "torchvision ssdlite320_mobilenet_v3_large (backbone + head)",
         _tv_ssdlite),
    Spec("fasterrcnn_rpn_mobilenet_v3", "detection",
         "torchvision fasterrcnn_mobilenet_v3_large_320_fpn (backbone + FPN + RPN head)", _tv_rpn),
    # segmentation with a resize to the input size
    Spec("lraspp_mobilenet_v3", "segmentation", "torchvision lraspp_mobilenet_v3_large",
         _tv_seg("lraspp_mobilenet_v3_large")),
    Spec("deeplabv3_mobilenet_v3", "segmentation", "torchvision deeplabv3_mobilenet_v3_large",
         _tv_seg("deeplabv3_mobilenet_v3_large")),
    # video / 3-D
    Spec("r3d_18", "video", "torchvision r3d_18", _tv_video("r3d_18")),
    Spec("r2plus1d_18", "video", "torchvision r2plus1d_18", _tv_video("r2plus1d_18")),
    Spec("mc3_18", "video", "torchvision mc3_18 (mixed convolutions: 3x3x3 stem, 1x3x3 after)", _tv_video("mc3_18")),
    # transformers, from configurations
    Spec("bert", "text encoder", "transformers BertModel (2 layers, hidden 32)", _bert, ctest=True),
    Spec("distilbert", "text encoder", "transformers DistilBertModel (2 layers, hidden 32)", _distilbert),
    Spec("gpt2", "text decoder", "transformers GPT2LMHeadModel (2 layers, hidden 32)", _gpt2, ctest=True),
    Spec("llama", "text decoder", "transformers LlamaForCausalLM (RoPE, RMSNorm, GQA; 2 layers, hidden 32)",
         _llama, ctest=True),
    Spec("bart", "text encoder-decoder", "transformers BartModel (2+2 layers, hidden 32)", _bart),
    Spec("t5", "text encoder-decoder", "transformers T5Model (relative position buckets, gated GELU)", _t5),
    Spec("vit", "vision transformer", "transformers ViTModel (2 layers, hidden 32, 32x32, patch 8)", _vit,
         ctest=True),
    Spec("convnext_hf", "classification", "transformers ConvNextForImageClassification (tiny config)",
         _convnext_hf),
    Spec("segformer", "segmentation", "transformers SegformerForSemanticSegmentation (tiny config)", _segformer),
    Spec("wav2vec2", "speech encoder", "transformers Wav2Vec2Model (conv front end, 2 layers)", _wav2vec2),
    Spec("whisper_encoder", "speech encoder", "transformers WhisperModel encoder (2 layers, 16 mel bins)",
         _whisper_encoder, ctest=True),
    # hand-written
    Spec("unet", "segmentation", "hand-written U-Net (ConvTranspose, skip concat, bilinear resize)",
         _plain(hw.UNetSmall, {"image": lambda g: _image(g, h=32)}, ["mask"]), ctest=True),
    Spec("gru_attention", "sequence", "hand-written bidirectional GRU + attention pooling",
         _plain(hw.GruAttention, {"sequence": lambda g: torch.randn(1, 12, 32, generator=g)}, ["logits"]),
         ctest=True),
    Spec("tcn_espcn", "other", "hand-written dilated causal Conv1d (weight norm) + ESPCN PixelShuffle",
         _plain(hw.TcnSuperRes, {"frames": lambda g: torch.randn(1, 16, 32, generator=g),
                                 "image": lambda g: _image(g, c=1, h=16)}, ["frames_out", "upscaled"]),
         ctest=True),
    Spec("causal_sdpa", "text decoder", "hand-written decoder with scaled_dot_product_attention(is_causal)",
         _plain(hw.CausalSelfAttention, {"input_ids": lambda g: _ids(g, 256, 16)}, ["logits"]), ctest=True),
    Spec("mlp_mixer", "vision", "hand-written MLP-Mixer (token mixing over the transposed patch axis)",
         _plain(hw.MlpMixer, {"image": lambda g: _image(g, h=32)}, ["logits"]), ctest=True),
    Spec("pointnet", "other", "hand-written PointNet (Conv1d 1x1, BatchNorm1d, max over points)",
         _plain(hw.PointNetSmall, {"points": lambda g: torch.randn(1, 3, 256, generator=g)}, ["logits"]),
         ctest=True),
    Spec("spatial_transformer", "vision", "hand-written spatial transformer (affine_grid + grid_sample)",
         _plain(hw.SpatialTransformer, {"image": lambda g: _image(g, c=1, h=28)}, ["logits"]), ctest=True,
         ts_opset=20, note="opset 20 for AffineGrid"),
    Spec("topk_moe", "text decoder", "hand-written top-2 mixture-of-experts layer (TopK router, einsum experts)",
         _plain(hw.TopKMoe, {"tokens": lambda g: torch.randn(1, 8, 32, generator=g)}, ["hidden"]), ctest=True),
]

BY_NAME = {s.name: s for s in SPECS}
