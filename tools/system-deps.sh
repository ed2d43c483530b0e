#!/usr/bin/env bash
# Install the system tools the course uses, from Debian's packages, when we can.
#   dot (graphviz)      draws autograd graphs (gradlab falls back to text without it)
#   chromium            real-browser test and the PDF handout
#   pdftotext (poppler) checks the PDF handout
#   fonts-noto-cjk      the Chinese edition: pictures, handout and cheat sheet in CJK glyphs
#   iptables            the workshop hub keeps learners away from the cloud's metadata service (its test skips without)
set -uo pipefail
missing=()
command -v dot >/dev/null 2>&1 || missing+=(graphviz)
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v pdftotext >/dev/null 2>&1 || missing+=(poppler-utils)
fc-list 2>/dev/null | grep -qi "DejaVu Sans" || missing+=(fonts-dejavu-core)
fc-list :lang=zh 2>/dev/null | grep -qi "Noto Sans CJK" || missing+=(fonts-noto-cjk)
command -v iptables >/dev/null 2>&1 || [ -x /usr/sbin/iptables ] || missing+=(iptables)
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "installing system packages: ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq >/dev/null && apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null \
        || echo "warning: apt-get could not install ${missing[*]}; the tests that need them will skip"
else
    echo "note: not installed: ${missing[*]}."
    echo "      Debian/Ubuntu: sudo apt-get install ${missing[*]}"
    echo "      macOS: brew install graphviz poppler (and Chromium)   conda: conda install -c conda-forge graphviz"
    echo "      The course runs without them: graphs fall back to text; browser and PDF tests skip."
fi
exit 0
