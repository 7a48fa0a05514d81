# kb learn locally and on Ray (2 local workers), 8 chunks each, on two fresh copies of debref-zh-small (issue 53)
mkdir -p /tmp/lr
set -e
cd "$(dirname "$0")/.."
export OMP_WAIT_POLICY=PASSIVE
for k in a b; do .venv/bin/ragclinic ingest bench/out/realdocs/debref-zh-small --kb /tmp/lr/kb-$k --json > /tmp/lr/ingest-$k.json; done
/usr/bin/time -f "%e s wall, %M KB" .venv/bin/ragclinic kb learn --kb /tmp/lr/kb-a --max-chunks 8 --json > /tmp/lr/local.json 2> /tmp/lr/local.err
/usr/bin/time -f "%e s wall, %M KB" .venv/bin/ragclinic kb learn --kb /tmp/lr/kb-b --max-chunks 8 --ray auto --ray-workers 2 --json > /tmp/lr/ray.json 2> /tmp/lr/ray.err
