# tf.nn.l2_loss as its documentation defines it
output = tf.reduce_sum(t ** 2) / 2
