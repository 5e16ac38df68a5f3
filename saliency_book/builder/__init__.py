"""``saliency-study book``: convert, execute and render the chapters; offline assets; browser check."""
