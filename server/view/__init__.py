"""``kdd view``: a local web page that shows a config, the IR after any pass with diffs, the assembly with
its register pressure, the instruction mix and the roofline point, live as the file changes on disk.

``session`` keeps the followed file and answers the page's requests (named as the language server's
custom methods, so the same page is the VS Code preview's content); ``http`` serves the page, those
requests and a stream of ``kdd/compiled`` events on 127.0.0.1; ``static/`` is the page itself.
"""
