#!/usr/bin/env bash
# Build Rearview and deploy it onto LocalStack (started with docker-compose.yml), then print the
# MCP URL. Needs: the SAM CLI and samlocal (pip install aws-sam-cli aws-sam-cli-local), the
# repository's virtualenv (.venv), and a python3.13 for the bytecode build (infra/python313.sh
# finds one or installs Debian's).
#
#   localstack/deploy.sh                 # deploy or update the stack "rearview-local"
#   STACK_NAME=other localstack/deploy.sh
#
# The API key is generated once and kept in localstack/.rearview/api-key (mode 600); only its
# sha256 digest is stored, in the SSM SecureString parameter the function reads.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
python="${PYTHON:-$root/.venv/bin/python}"
stack="${STACK_NAME:-rearview-local}"
endpoint="${LOCALSTACK_ENDPOINT:-http://localhost:4566}"
bucket="${REARVIEW_SAM_BUCKET:-rearview-sam-artifacts}"
parameter="/rearview/api-keys"
tenant="${REARVIEW_TENANT:-local}"

export AWS_ACCESS_KEY_ID="${AWS_ACCESS_KEY_ID:-test}"
export AWS_SECRET_ACCESS_KEY="${AWS_SECRET_ACCESS_KEY:-test}"
export AWS_DEFAULT_REGION="${AWS_DEFAULT_REGION:-us-east-1}"
export AWS_ENDPOINT_URL="$endpoint"
export SAM_CLI_TELEMETRY=0

for tool in sam samlocal "$python"; do
  command -v "$tool" >/dev/null || { echo "deploy.sh: $tool not found (see localstack/README.md)" >&2; exit 1; }
done
curl -fs "$endpoint/_localstack/health" >/dev/null \
  || { echo "deploy.sh: LocalStack is not answering at $endpoint (docker compose up first)" >&2; exit 1; }

# 1. An API key for this stack (created once), stored hashed in SSM by infra/put_api_key.py,
#    and the bucket sam deploy uploads to.
mkdir -p "$here/.rearview"
chmod 700 "$here/.rearview"
key_file="$here/.rearview/api-key"
if [[ ! -s "$key_file" ]]; then
  (umask 077 && "$python" -c 'import secrets; print("rv_" + secrets.token_urlsafe(32))' >"$key_file")
fi
"$python" "$root/infra/put_api_key.py" --parameter "$parameter" --tenant "$tenant" --key - <"$key_file"
REARVIEW_BUCKET="$bucket" "$python" - <<'PY'
import os
import boto3

s3 = boto3.client("s3")
if os.environ["REARVIEW_BUCKET"] not in [b["Name"] for b in s3.list_buckets().get("Buckets", [])]:
    s3.create_bucket(Bucket=os.environ["REARVIEW_BUCKET"])
PY

# 2. Build for this machine's architecture (LocalStack runs the functions natively): the same
#    template with its Architectures rewritten (infra/sam_template.py), which install_layer.py
#    reads through REARVIEW_TEMPLATE, so the layer's wheels match.
case "$(uname -m)" in
  x86_64 | amd64) arch=x86_64 ;;
  aarch64 | arm64) arch=arm64 ;;
  *) echo "deploy.sh: unsupported architecture $(uname -m)" >&2; exit 1 ;;
esac
template="$here/.rearview/template-$arch.yaml"
(cd "$root" && "$python" -m infra.sam_template --architecture "$arch" --output "$template" >/dev/null)
python313="$(bash "$root/infra/python313.sh")"
(cd "$root" && REARVIEW_TEMPLATE="$template" PYTHON="$python313" sam build --template-file "$template")

# 3. Deploy: Function URL + API keys, the OpenSearch container, the offline hashing embedder.
(cd "$root" && samlocal deploy \
  --stack-name "$stack" \
  --s3-bucket "$bucket" \
  --capabilities CAPABILITY_IAM \
  --no-confirm-changeset \
  --no-fail-on-empty-changeset \
  --parameter-overrides \
    EndpointType=FunctionUrl \
    AuthMode=apikey \
    ApiKeysParameterName="$parameter" \
    OpenSearchMode=local \
    OpenSearchEndpoint=http://opensearch:9200 \
    Embedder=hashing \
    EmbeddingDimension=256 \
    ColdStartMitigation=none \
    SchedulesState=DISABLED)

url="$("$python" -c '
import boto3, sys
outputs = boto3.client("cloudformation").describe_stacks(StackName=sys.argv[1])["Stacks"][0]["Outputs"]
print(next(o["OutputValue"] for o in outputs if o["OutputKey"] == "McpUrl"))
' "$stack")"
echo "$url" >"$here/.rearview/mcp-url"

cat <<MSG

Rearview is deployed on LocalStack.
  MCP URL:  $url
  API key:  in $key_file (tenant "$tenant")
Smoke test: $python localstack/smoke.py
MSG
