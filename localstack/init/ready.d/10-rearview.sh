#!/usr/bin/env bash
# LocalStack "ready" hook: the resources the SAM stack expects to exist before it is deployed.
#
# - the bucket `sam deploy` uploads the build to (deploy.sh passes it with --s3-bucket);
# - the SSM SecureString with the hashed API keys, when REARVIEW_API_KEYS_JSON is set in the
#   container's environment (deploy.sh writes it otherwise; keys are only ever stored hashed).
set -euo pipefail

bucket="${REARVIEW_SAM_BUCKET:-rearview-sam-artifacts}"
if ! awslocal s3api head-bucket --bucket "$bucket" >/dev/null 2>&1; then
  awslocal s3api create-bucket --bucket "$bucket" >/dev/null
  echo "rearview: created deployment bucket $bucket"
fi

if [[ -n "${REARVIEW_API_KEYS_JSON:-}" ]]; then
  awslocal ssm put-parameter --name "${REARVIEW_API_KEYS_PARAMETER:-/rearview/api-keys}" \
    --type SecureString --overwrite --value "$REARVIEW_API_KEYS_JSON" >/dev/null
  echo "rearview: stored the hashed API key map"
fi
