from .present.cli import app

app(prog_name="surreal-eval")
