"""explorer.ui"""
