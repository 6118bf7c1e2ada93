"""Scrapes a Prometheus endpoint and parses it with the official Python client's text-format parser
(prometheus_client.parser), printing what it read as JSON: {"families": {name: {"type", "help", "samples":
[{"name", "labels", "value"}]}}}. A body the parser rejects makes it exit non-zero, naming the problem."""

import json
import sys
import urllib.request

from prometheus_client.parser import text_string_to_metric_families


def main():
    url = sys.argv[1]
    with urllib.request.urlopen(url, timeout=10) as response:
        content_type = response.headers.get("Content-Type", "")
        body = response.read().decode("utf-8")
    families = {}
    for family in text_string_to_metric_families(body):
        families[family.name] = {
            "type": family.type,
            "help": family.documentation,
            "samples": [{"name": s.name, "labels": s.labels, "value": s.value} for s in family.samples],
        }
    json.dump({"content_type": content_type, "families": families}, sys.stdout)


if __name__ == "__main__":
    main()
