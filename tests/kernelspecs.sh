# Sourced by the tests that start kernels by name (check_kernel.sh,
# check_browser.sh): install_kernelspecs PREFIX writes, under
# PREFIX/share/jupyter/kernels, the kernelspecs they use, as `cellexec
# kernel install --prefix` writes them:
#   cellexec          the subprocess backend
#   cellexec-sandbox  the same with isolation = sandbox
#   cellexec-timeout  the subprocess backend, 1 s a cell
#   python3           ipykernel on $python (not a python3 found first on
#                     PATH), its history in memory as nbclient starts it
# Needs $builddir and $python.
install_kernelspecs() {
  ks_prefix=$1
  ks_cellexec="$builddir/tools/cellexec"
  rm -rf "$ks_prefix"
  "$ks_cellexec" kernel install --prefix "$ks_prefix" --name cellexec -b subprocess >/dev/null &&
  "$ks_cellexec" kernel install --prefix "$ks_prefix" --name cellexec-sandbox -b subprocess \
    -o isolation=sandbox --display-name "Python (cellexec sandbox)" >/dev/null &&
  "$ks_cellexec" kernel install --prefix "$ks_prefix" --name cellexec-timeout -b subprocess \
    -o timeout=1 --display-name "Python (cellexec, 1 s a cell)" >/dev/null || return 1
  mkdir -p "$ks_prefix/share/jupyter/kernels/python3" || return 1
  cat > "$ks_prefix/share/jupyter/kernels/python3/kernel.json" <<JSON
{"argv": ["$python", "-Xfrozen_modules=off", "-m", "ipykernel_launcher", "-f", "{connection_file}",
          "--HistoryManager.hist_file=:memory:"],
 "display_name": "Python 3 (ipykernel)", "language": "python"}
JSON
}
