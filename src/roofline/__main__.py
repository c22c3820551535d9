from roofline.cli import run

run()
