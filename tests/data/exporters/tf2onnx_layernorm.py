"""Writes tf2onnx_layernorm/ (model.onnx and a data set of ONNX Runtime's outputs): a small
Keras model exported by tf2onnx, the way Keras and JAX/Flax models reach ONNX. tf2onnx writes layer
norms as Reshape, Mul (Square), GlobalAveragePool/ReduceMean, Sub, Sqrt and Reciprocal. In the
Flax-style norm (mean of the square minus the square of the mean) one Reshape is read by a
ReduceMean, which starts a kernel of its own, and then by a Square, which joins the epilogue of
the earlier kernel that produced the Reshape's source: the rules partitioner once put the Reshape
in the later kernel, so the Square read a tensor of a kernel after its own.

Run with tensorflow (or tensorflow-cpu), tf2onnx, onnx and onnxruntime installed:
    python3 tf2onnx_layernorm.py
Random weights (seeded); the model is 15 KB.
"""
import os

import numpy as np
import onnx
import onnx.numpy_helper
import tensorflow as tf
import tf2onnx

HERE = os.path.dirname(os.path.abspath(__file__))


class FlaxLayerNorm(tf.keras.layers.Layer):
    """A norm over all of a sample's features, written the way jax2tf writes flax.linen's
    LayerNorm: var = mean(x^2) - mean(x)^2, the square of the flattened (reshaped) activations,
    the mean of the activations themselves."""

    def build(self, shape):
        self.scale = self.add_weight(shape=(shape[-1],), initializer="ones", name="scale")
        self.bias = self.add_weight(shape=(shape[-1],), initializer="zeros", name="bias")

    def call(self, x):
        flat = tf.reshape(x, (1, -1))
        # jax2tf's lower-case names: tf2onnx orders siblings by name, so the mean comes before
        # the Square that reads the same Reshape.
        mean = tf.reduce_mean(flat, axis=-1, keepdims=True, name="reduce_mean")
        mean2 = tf.reduce_mean(tf.square(flat, name="Square"), axis=-1, keepdims=True,
                               name="reduce_mean_1")
        var = tf.maximum(mean2 - tf.square(mean), 0.0)
        y = (flat - mean) * tf.math.rsqrt(var + 1e-6)
        return tf.reshape(y, tf.shape(x)) * self.scale + self.bias


def main():
    tf.random.set_seed(0)
    np.random.seed(0)
    x = tf.keras.Input(shape=(8, 16), batch_size=1, name="x")
    h = tf.keras.layers.Dense(32, name="Dense_0")(x)
    h = FlaxLayerNorm(name="LayerNorm_0")(h)
    h = tf.keras.layers.Dense(32, activation="relu", name="Dense_1")(h)
    h = tf.keras.layers.LayerNormalization(name="LayerNorm_1")(h)
    y = tf.keras.layers.Dense(4, name="Dense_2")(h)
    model = tf.keras.Model(x, y)
    # Weights away from their initial values, so that every term of the norms counts.
    for w in model.weights:
        w.assign(w + tf.random.normal(w.shape, stddev=0.1))
    spec = (tf.TensorSpec((1, 8, 16), tf.float32, name="x"),)
    proto, _ = tf2onnx.convert.from_keras(model, input_signature=spec, opset=13)
    proto.producer_name = "tf2onnx"
    folder = os.path.join(HERE, "tf2onnx_layernorm")
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    with open(os.path.join(folder, "model.onnx"), "wb") as f:
        f.write(proto.SerializeToString())
    # The reference: ONNX Runtime's outputs when it is installed, else TensorFlow's.
    xv = np.random.default_rng(1).standard_normal((1, 8, 16)).astype(np.float32)
    try:
        import onnxruntime

        sess = onnxruntime.InferenceSession(proto.SerializeToString())
        yv = sess.run(None, {sess.get_inputs()[0].name: xv})[0]
    except ImportError:
        yv = model(xv).numpy()
    data = os.path.join(folder, "test_data_set_0")
    for name, value, value_name in (("input_0.pb", xv, proto.graph.input[0].name),
                                    ("output_0.pb", yv, proto.graph.output[0].name)):
        t = onnx.numpy_helper.from_array(value, value_name)
        with open(os.path.join(data, name), "wb") as f:
            f.write(t.SerializeToString())


if __name__ == "__main__":
    main()
