"""The two tiny Qwen-VL families the trainer tests run on, and their frame size factor."""

FAMILIES = ("qwen2_5_vl", "qwen3_vl")
SIZE_FACTOR = {
    "qwen2_5_vl": 28,
    "qwen3_vl": 32,
}  # patch size x spatial merge of each tiny vision tower
