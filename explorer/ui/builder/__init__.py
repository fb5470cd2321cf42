"""The layer builder: palette, layer stack (view and model), inspector and model settings."""

from .inspector import LayerInspector
from .layer_model import LayerStackModel
from .layer_view import LayerStackView
from .model_settings import ModelSettings
from .palette import LayerPalette

__all__ = ["LayerInspector", "LayerPalette", "LayerStackModel", "LayerStackView", "ModelSettings"]
