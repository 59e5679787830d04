# tf.nn.sigmoid_cross_entropy_with_logits: the stable formula its documentation gives
loss = max(x, 0) - x * z + log(1 + exp(-abs(x)))
