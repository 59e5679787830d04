# Softmax cross-entropy with one-hot labels, TensorFlow style
def softmax_cross_entropy(logits, labels):
    return -tf.reduce_sum(labels * tf.nn.log_softmax(logits, axis=-1), axis=-1)
