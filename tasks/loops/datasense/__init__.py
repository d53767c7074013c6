"""datasense (DataSense-Bench): selectors predict which training data helps, never seeing
an outcome; a fresh student trained per group verifies the prediction on hidden cases."""
